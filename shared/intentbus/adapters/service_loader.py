"""botocore's data loader without its scan of every service it knows, on each client's first load.

``Loader.load_service_model`` lists every directory of botocore's data (some 400 services, each listed and
stat'ed) only to tell an unknown service name; that is about 10 ms of a cold start. Here the service's own
directory answers: a name botocore has no model for raises the same ``UnknownServiceError``.

Its files are read into plain dicts. botocore's ``JSONFileLoader`` builds every JSON object as an
``OrderedDict`` (``object_pairs_hook``), a Python call per object: its endpoints file (1.2 MB) and each
client's service model take about half again as long to read that way, ~10 ms of a stage's cold start.
Since Python 3.7 a dict keeps the file's order too, and botocore reads the data only by key and in order.
"""

from __future__ import annotations

import json
import os
from typing import Any

from botocore.exceptions import DataNotFoundError, UnknownServiceError
from botocore.loaders import JSONFileLoader, Loader, instance_cache


class PlainJSONFileLoader(JSONFileLoader):
    """botocore's JSON file loader, its objects read as dicts rather than ``OrderedDict``s."""

    def _load_file(self, full_path: str, open_method: Any) -> Any:
        if not os.path.isfile(full_path):
            return None
        with open_method(full_path, "rb") as file:
            return json.loads(file.read().decode("utf-8"))


class ServiceLoader(Loader):
    @classmethod
    def like(cls, loader: Loader) -> ServiceLoader:
        """A loader searching where ``loader`` searches (``AWS_DATA_PATH`` and botocore's own data)."""
        stock = type(loader.file_loader) is JSONFileLoader
        return cls(
            extra_search_paths=list(loader.search_paths),
            file_loader=PlainJSONFileLoader() if stock else loader.file_loader,
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
