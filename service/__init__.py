"""HTTP face of Deja: FastAPI app, gateway pipeline, upstream client, error mapping, CLI."""
