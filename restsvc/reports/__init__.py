"""Reports: definitions (``definitions.py``), parameters, the runner with its
CSV output and our own XLSX writer (``xlsx.py``), and who may run what
(``registry.py``). No HTTP here: ``restsvc/api/reports.py`` is the door."""
