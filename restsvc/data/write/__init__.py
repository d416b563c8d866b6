"""The one write path (ARCHITECTURE.md rule 11): plans of writes, their statements, row rules,
soft delete and the history they keep."""
