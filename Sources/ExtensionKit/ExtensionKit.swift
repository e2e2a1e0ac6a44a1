// ExtensionKit
