"""What a fetch plan loads: the statements, filters, joins, paging and aggregates of a read."""
