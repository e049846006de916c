from tests.ton_devnet.fixtures import ton_devnet

__all__ = ["ton_devnet"]
