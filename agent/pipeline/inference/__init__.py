"""The token-budgeted, resumable inference runner (`python -m agent.pipeline.inference`).

It generates the target model's answers for a dataset's prompts through SGLang's native
`/generate` and stops at the dataset's token budget. Each module does one part:
prompts, resume and records, the budget gate, the SGLang client, status, and the run itself.
"""
