// The player's API takes and reports the network layer's types (`ByteSource`, `HTTPOptions`,
// `StreamMetadata`, ...), so `import OATStreaming` brings them too, as it did before they moved.
@_exported import OATNetwork
