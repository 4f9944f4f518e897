"""The proving daemon behind gRPC (``cuzk.daemon.v1.ProvingEngine``, and Curio's ``cuzk.v1``): server, HTTP status endpoint, client."""
