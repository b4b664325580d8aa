import Testing

/// The seed translations share the process-wide `OAT_OUTPUT` setting, so they run one at a time.
@Suite(.serialized) struct CompatSeedTests {}
