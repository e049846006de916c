"""Hypothesis strategies for the TRON transactions Kassa writes (chains.tron.proto)."""

from __future__ import annotations

from hypothesis import strategies as st

from chains.tron import address
from chains.tron.proto import (
    AccountCreateContract,
    AccountType,
    Contract,
    DelegateResourceContract,
    RawData,
    Resource,
    TransferContract,
    TriggerSmartContract,
    UnDelegateResourceContract,
)

addresses = st.binary(min_size=20, max_size=20).map(address.from_evm)
amounts = st.integers(min_value=0, max_value=2**63 - 1)
int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
resources = st.sampled_from(list(Resource))

contracts = st.one_of(
    st.builds(TransferContract, addresses, addresses, amounts),
    st.builds(
        TriggerSmartContract,
        addresses,
        addresses,
        data=st.binary(max_size=200),
        call_value=amounts,
        call_token_value=amounts,
        token_id=amounts,
    ),
    st.builds(DelegateResourceContract, addresses, resources, amounts, addresses, st.booleans(), int64s),
    st.builds(UnDelegateResourceContract, addresses, resources, amounts, addresses),
    st.builds(AccountCreateContract, addresses, addresses, st.sampled_from(list(AccountType))),
)

raw_datas = st.builds(
    RawData,
    ref_block_bytes=st.binary(max_size=2),
    ref_block_hash=st.binary(max_size=8),
    expiration=int64s,
    contracts=st.lists(
        st.builds(Contract, contracts, st.integers(min_value=-(2**31), max_value=2**31 - 1)),
        min_size=1,
        max_size=2,
    ).map(tuple),
    timestamp=int64s,
    data=st.binary(max_size=100),
    fee_limit=amounts,
    ref_block_num=int64s,
)
