"""``python -m components.rewards``: every registered reward, as its spec describes it (``reward_listing``)."""

from components.rewards import reward_listing

print("\n".join(reward_listing()))
