"""/v1/estimates: one workload on one GPU type and count, feasible or not."""
