"""Built-in hardware profiles (YAML) shipped with rltwin."""
