"""What each notebook says: one module per notebook (``nNN_<name>.py``), holding its sentences,
tables, claims rows and figure calls. A notebook imports its report module; a report module
imports games, trainers, ``stats`` and ``claims``, and nothing imports a report module."""
