"""Quality evaluators scored by an LLM judge (hpcbench.judge), one per file,
each with its rubric in evaluators/prompts/<name>.v<N>.txt."""
