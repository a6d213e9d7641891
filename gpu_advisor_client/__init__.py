"""gpu-advisor's client for bots: typed requests and answers, sync and async, retries.

Depends on httpx and pydantic only (not on the server's FastAPI / SQLAlchemy / SQLModel).
"""

from gpu_advisor_client.client import AdvisorClient, ApiError, AsyncAdvisorClient, Retry
from gpu_advisor_client.models import (
    Assumption,
    Candidate,
    ComputeIn,
    Constraints,
    Estimate,
    Gpu,
    InferenceIn,
    ModelIn,
    Page,
    Preset,
    PriceChange,
    Quote,
    RecommendationResult,
    Run,
    RunRequest,
    RunSummary,
    StoredWorkload,
    TrainingIn,
    View,
    Workload,
    WorkloadSubmission,
)

__all__ = [
    "AdvisorClient", "ApiError", "Assumption", "AsyncAdvisorClient", "Candidate", "ComputeIn",
    "Constraints", "Estimate", "Gpu", "InferenceIn", "ModelIn", "Page", "PriceChange", "Preset",
    "Quote", "RecommendationResult", "Retry", "Run", "RunRequest", "RunSummary", "StoredWorkload",
    "TrainingIn", "View", "Workload", "WorkloadSubmission",
]
