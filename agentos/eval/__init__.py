"""Memory evaluations on LoCoMo: retrieval (`locomo`) and question answering end to end (`locomo_qa`), run as
`python -m agentos.eval locomo PATH` and `python -m agentos.eval locomo-qa PATH --model SPEC`."""
