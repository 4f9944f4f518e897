"""The proving daemon behind gRPC (``cuzk.v1.ProvingEngine``): server, HTTP status endpoint, client."""
