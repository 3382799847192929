"""Paper B's second game: tic-tac-toe against random, MCTS and noisy-MCTS opponents.

``game`` (open_spiel's rules, the nine-digit board, seeds), ``opponents`` (scripted
players), ``agents`` (the batched agent interface and the scripted agents),
``prompts`` and ``parsing`` (the text layer), ``runner`` (games in a batch), ``cli``.
"""
