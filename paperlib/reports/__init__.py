"""What each notebook says: one module per notebook (``nNN_<name>.py``), holding its sentences,
tables, claims rows and figure calls; the wording several of them share sits in ``common.py``
and ``before_after.py``. A notebook imports its report module; a report module imports games,
trainers, ``stats``, ``claims`` and those two shared modules; nothing else imports a report
module (a test holds the games and the shared layers to it)."""
