"""What every part of the service stands on: settings, errors, the database engine and its
deadline, table conventions, snapshots, API keys, times and client text. Imports no domain."""
