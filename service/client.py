"""The bots' client now lives in the light ``gpu_advisor_client`` package (httpx + pydantic
only); this name is kept so existing imports keep working."""

from gpu_advisor_client import *  # noqa: F403
from gpu_advisor_client import __all__  # noqa: F401
