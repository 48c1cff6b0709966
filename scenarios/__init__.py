"""Built-in scenarios (YAML) shipped with rltwin."""
