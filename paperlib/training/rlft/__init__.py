"""Paper B's RL fine-tuning (RLFT): :mod:`~paperlib.training.rlft.objective`, the objective piece by
piece (rewards, returns and advantages, PPO's clipped loss with a KL penalty, log-probabilities,
a value head), and :mod:`~paperlib.training.rlft.loop`, the loop every game plugs into (its
protocol is in that module's doc). It knows no game: the bandits plug in from
``paperlib.bandits.training``, tic-tac-toe from ``paperlib.tictactoe.training``.

Below, the objective's constants, paper B's and ours, without torch: the settings' defaults
read them, and the command line with them, without loading a model library. Sources in the
comments."""

INVALID_PENALTY = -5.0  # paper B, Sec. 3 (reward shaping for valid actions)
EXPLORATION_BONUS = 1.0  # paper B, Sec. 4.4 and Fig. 8 (+1 for an untried arm)
CLIP_EPSILON = 0.2  # paper B, Sec. 3 (PPO's clipping, Schulman et al. 2017)
KL_BETA = 0.05  # paper B, Sec. 3 (KL penalty to the frozen model)
GAMMA = 1.0  # [ours] rewards-to-go undiscounted, as regret is
GAE_GAMMA = 1.0  # [ours] a game is at most 5 agent moves and its return is reported undiscounted
GAE_LAMBDA = 0.95  # [ours] the GAE and PPO papers' usual value (Schulman et al. 2016, 2017)
VALUE_COEF = 0.1  # [ours] trl's former PPOConfig default (vf_coef)
ADVANTAGE_EPS = 1e-8  # [ours] guards the standardisation of a batch whose advantages are all equal
