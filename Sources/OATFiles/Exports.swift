@_exported import OATCore
