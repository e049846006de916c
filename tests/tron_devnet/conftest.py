from tests.tron_devnet.fixtures import tron_devnet

__all__ = ["tron_devnet"]
