"""`python -m agent.pipeline.export`: training data a trainer takes as it is, from prompts + responses.

Per dataset (`OUT/NAME/`) and merged with per-dataset weights (`OUT/all/`), one form per folder:
- `ids/ids.jsonl`: `{"id", "input_ids", "loss_mask"}`, the prompt's ids as the runner sent them
  plus the output ids, loss on the output only: the exact tokens the target produced;
- `conversations/specforge.jsonl` (with `--chat-template NAME`): SpecForge's conversation rows,
  only those SpecForge's trainer renders, with that template, to exactly the ids above and their
  loss mask (specforge_render.py; the rest left out, counted by reason);
- `quality.json` and `quality.md`: finish reasons, reasoning closed, empty and looping answers,
  lengths, duplicates, prompts left without an answer, what `--drop` left out, the round trip and
  the records past the trainer's max_length.
`OUT/trainers/` holds ready-to-run SpecForge and speculators settings on the exact form.
Everything streams: records are read, checked and written one at a time, and prompts are found
by id through an index on disk, so memory stays flat in the number of records.
"""
