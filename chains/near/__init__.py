"""NEAR: the transaction codec and the seed's keys, kept apart from any node so they test offline."""
