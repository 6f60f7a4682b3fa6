"""The five slash commands as shipped data: one source for Claude Code's /recall ... /handoff and the
MCP prompts of the same names (surfaces/prompts.py). `.claude/commands/*.md` are byte copies of
these files, written by `scripts/sync_commands.py`; tests/surfaces/test_prompts_resources.py fails
when the two differ."""
