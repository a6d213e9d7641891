"""The GPU catalog: specs of every GPU type the advisor knows."""
