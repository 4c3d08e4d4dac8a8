"""botocore's data loader without its scan of every service it knows, on each client's first load.

``Loader.load_service_model`` lists every directory of botocore's data (some 400 services, each listed and
stat'ed) only to tell an unknown service name; that is about 10 ms of a cold start. Here the service's own
directory answers: a name botocore has no model for raises the same ``UnknownServiceError``.
"""

from __future__ import annotations

import os
from typing import Any

from botocore.exceptions import DataNotFoundError, UnknownServiceError
from botocore.loaders import Loader, instance_cache


class ServiceLoader(Loader):
    @classmethod
    def like(cls, loader: Loader) -> ServiceLoader:
        """A loader searching where ``loader`` searches (``AWS_DATA_PATH`` and botocore's own data)."""
        return cls(
            extra_search_paths=list(loader.search_paths),
            file_loader=loader.file_loader,
            include_default_search_paths=False,
        )

    @instance_cache
    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        try:
            version = api_version or self.determine_latest_version(service_name, type_name)
        except DataNotFoundError:
            known = self.list_available_services(type_name)  # only on the way to the error botocore raises
            raise UnknownServiceError(
                service_name=service_name, known_service_names=", ".join(known)
            ) from None
        model = self.load_data(os.path.join(service_name, version, type_name))
        internals: Any = self  # botocore's own steps after its check, as its load_service_model takes them
        internals._extras_processor.process(model, internals._find_extras(service_name, type_name, version))
        return model
