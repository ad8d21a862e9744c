"""`python -m agent.pipeline.export`: training data a trainer takes as it is, from prompts + responses.

Per dataset (`OUT/NAME/`) and merged with per-dataset weights (`OUT/all/`):
- `specforge.jsonl`: SpecForge's conversation rows `{"id", "conversations": [{"role", "content"}]}`,
  the assistant turn decoded from `output_ids` exactly as the model emitted it (reasoning and its
  markers kept, and the think marker the chat template opened the turn with);
- `ids.jsonl`: `{"id", "input_ids", "loss_mask"}`, the prompt's ids as the runner sent them plus
  the output ids, loss on the output only: the exact tokens the target produced;
- `quality.json` and `quality.md`: finish reasons, reasoning closed, empty and looping answers,
  lengths, duplicates, prompts left without an answer, what `--drop` left out, and the round trip:
  the chat template applied to each exported conversation and tokenized as SpecForge does,
  compared with the ids actually sent and generated.
Everything streams: records are read, checked and written one at a time, and prompts are found
by id through an index on disk, so memory stays flat in the number of records.
"""
