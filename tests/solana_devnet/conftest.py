from tests.solana_devnet.fixtures import solana_devnet

__all__ = ["solana_devnet"]
