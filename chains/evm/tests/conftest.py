import pytest

from chains.evm.signer import get_signer


@pytest.fixture(autouse=True)
def fresh_signer():
    """Each test signs with a signer whose journal is empty (ids repeat across tests, rolled back)."""
    get_signer.cache_clear()
    yield
    get_signer.cache_clear()
