"""gpu-advisor's client for bots: typed requests and answers, sync and async, retries.

Depends on httpx and pydantic only (not on the server's FastAPI / SQLAlchemy / SQLModel).

    from gpu_advisor_client import AdvisorClient

    with AdvisorClient("http://127.0.0.1:8000") as api:
        best = api.recommend({"kind": "inference", "model": {"preset": "llama-3.1-8b"},
                              "inference": {"prompt_tokens": 1024, "output_tokens": 256,
                                            "target_requests_per_s": 20},
                              "objective": "cost"}, limit=3).recommendations[0]
        print(best.gpu.slug, best.gpu_count, best.cost.usd_per_hour)
        print(best.provision.skypilot_yaml)

examples/client_quickstart.py in the repository is the same, runnable.
"""

from gpu_advisor_client.client import AdvisorClient, ApiError, AsyncAdvisorClient, Retry
from gpu_advisor_client.models import (
    Assumption,
    Candidate,
    ComputeIn,
    Constraints,
    Cost,
    Estimate,
    Gpu,
    InferenceIn,
    ModelIn,
    Page,
    Preset,
    PriceChange,
    Provision,
    Quote,
    RecommendationResult,
    RecommendationSummary,
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
    "Constraints", "Cost", "Estimate", "Gpu", "InferenceIn", "ModelIn", "Page", "PriceChange",
    "Preset", "Provision", "Quote", "RecommendationResult", "RecommendationSummary", "Retry",
    "Run", "RunRequest", "RunSummary", "StoredWorkload", "TrainingIn", "View", "Workload",
    "WorkloadSubmission",
]
