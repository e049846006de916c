"""Published vectors, each beside its source, so the codec is checked against what NEAR's own tools emit.

Every secret key here is a published test key: none of them holds, or ever held, anything.
"""

# near/near-api-js, packages/transactions/test/serialize.test.ts at 3af9c185db5e44ab637dc0b84abeea714cf7a17a
# (2025-04-03; the signing tests left the file in the next commit), "serialize and sign transfer tx":
# createTransferTx() signed by this key; the same transfer without its signature is "serialize transfer
# tx", still in test/unit/transactions/serialize.test.ts today.
TRANSFER_SECRET_KEY = (
    "ed25519:3hoMW1HvnRLSFCLZnvPzWeoGwtdHzke34B2cTHM8rhcbG3TbuLKtShTv3DvyejnXKXKBiV7YPkLeqUHN1ghnqpFv"
)
TRANSFER_PUBLIC_KEY = "Anu7LYDfpLtkP7E16LT9imXF694BdQaa9ufVkQiwTQxC"  # PublicKey.fromString, bare base58
TRANSFER_SIGNER = "test.near"
TRANSFER_RECEIVER = "whatever.near"
TRANSFER_NONCE = 1
TRANSFER_DEPOSIT = 1
BLOCK_HASH = "244ZQ9cgj3CQ6bWBdytfrJMuMQ1jdXLFGnr4HhvtCTnM"
TRANSFER_HEX = (
    "09000000746573742e6e65617200917b3d268d4b58f7fec1b150bd68d69be3ee5d4cc39855e341538465bb77860d01000000"
    "000000000d00000077686174657665722e6e6561720fa473fd26901df296be6adc4cc4df34d040efa2435224b6986910e630"
    "c2fef6010000000301000000000000000000000000000000"
)
TRANSFER_SIGNATURE_BASE64 = (
    "lpqDMyGG7pdV5IOTJVJYBuGJo9LSu0tHYOlEQ+l+HE8i3u7wBZqOlxMQDtpuGRRNp+ig735TmyBwi6HY0CG9AQ=="
)
# Same test, and near/near-api-js test/unit/transactions/data/signed_transaction1.json (the same bytes).
SIGNED_TRANSFER_HEX = (
    TRANSFER_HEX
    + "00969a83332186ee9755e4839325525806e189a3d2d2bb4b4760e94443e97e1c4f22deeef0059a8e9713100eda6e19144d"
    "a7e8a0ef7e539b20708ba1d8d021bd01"
)

# near/near-api-js, test/unit/transactions/serialize.test.ts, "serialize multi-action tx": CreateAccount,
# DeployContract, FunctionCall, Transfer(123), Stake, AddKey, DeleteKey, DeleteAccount("123") from
# test.near to "123". The hash is from the same file at 3af9c185 ("serialize and sign multi-action tx":
# expect(baseEncode(hash)).toEqual(...), the hash signTransaction returns).
MULTI_ACTION_SECRET_KEY = (
    "ed25519:2wyRcSwSuHtRVmkMCGjPwnzZmQLeXLzLLyED1NDMt4BjnKgQL6tF85yBx6Jr26D2dUNeC716RBoTxntVHsegogYw"
)
MULTI_ACTION_HEX = (
    "09000000746573742e6e656172000f56a5f028dfc089ec7c39c1183b321b4d8f89ba5bec9e1762803cc2491f6ef801000000"
    "00000000030000003132330fa473fd26901df296be6adc4cc4df34d040efa2435224b6986910e630c2fef608000000000103"
    "000000010203020300000071717103000000010203e80300000000000040420f00000000000000000000000000037b000000"
    "0000000000000000000000000440420f00000000000000000000000000000f56a5f028dfc089ec7c39c1183b321b4d8f89ba"
    "5bec9e1762803cc2491f6ef805000f56a5f028dfc089ec7c39c1183b321b4d8f89ba5bec9e1762803cc2491f6ef800000000"
    "000000000000030000007a7a7a010000000300000077777706000f56a5f028dfc089ec7c39c1183b321b4d8f89ba5bec9e17"
    "62803cc2491f6ef80703000000313233"
)
MULTI_ACTION_TXID = "Fo3MJ9XzKjnKuDuQKhDAC6fra5H2UWawRejFSEpPNk3Y"

# near/near-api-js, test/unit/transactions/data/transaction1.json: a FunctionCall ("addMessage") whose
# signer_id is the empty string, which borsh round-trips but nearcore's AccountId refuses.
FUNCTION_CALL_HEX = (
    "0000000000795cb7b5f57222e742d1759092f0e20071a0cd2bf30e1f681d800e67935e168801000000000000001000000073"
    "747564696f2d76776375396534316d4def837b838543990f3380af8e2a3817ddf70fe9960135b2add25a679b2a01ed0100"
    "0000020a0000006164644d6573736167650b0000007b2274657874223a22227d80841e00000000000000000000000000000000"
    "0000000000"
)

# near/nearcore, core/account-id/src/lib.rs, tests::OK_ACCOUNT_IDS and tests::BAD_ACCOUNT_IDS (their two
# repeated entries once).
NEARCORE_OK_ACCOUNT_IDS = (
    "aa",
    "a-a",
    "a-aa",
    "100",
    "0o",
    "com",
    "near",
    "bowen",
    "b-o_w_e-n",
    "b.owen",
    "bro.wen",
    "a.ha",
    "a.b-a.ra",
    "system",
    "over.9000",
    "google.com",
    "illia.cheapaccounts.near",
    "0o0ooo00oo00o",
    "alex-skidanov",
    "10-4.8-2",
    "no_lols",
    "0123456789012345678901234567890123456789012345678901234567890123",
    "near.a",
)
NEARCORE_BAD_ACCOUNT_IDS = (
    "a",
    "A",
    "Abc",
    "-near",
    "near-",
    "-near-",
    "near.",
    ".near",
    "near@",
    "@near",
    "неар",
    "@@@@@",
    "0__0",
    "0_-_0",
    "..",
    "a..near",
    "nEar",
    "_bowen",
    "hello world",
    "abcdefghijklmnopqrstuvwxyz.abcdefghijklmnopqrstuvwxyz.abcdefghijklmnopqrstuvwxyz",
    "01234567890123456789012345678901234567890123456789012345678901234",
    "some-complex-address@gmail.com",
    "sub.buy_d1gitz@atata@b0-rg.c_0_m",
)
# near/nearcore, core/account-id/src/lib.rs, AccountId::is_implicit's doc example.
NEARCORE_IMPLICIT = "98793cd91a3f870fb126f66285808c7e094afcfc4eda8a970f6648cdf0dbd6de"

# RFC 8032, section 7.1, TEST 1 to TEST 3: (secret key, public key, message, signature), hex.
RFC8032 = (
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
)

# SLIP-0010 (satoshilabs/slips, slip-0010.md), "Test vector 1 for ed25519": (path, private key, public
# key as SLIP-10 prints it, with its 0x00 prefix).
SLIP10_SEED = "000102030405060708090a0b0c0d0e0f"
SLIP10_ED25519 = (
    (
        "m",
        "2b4be7f19ee27bbf30c667b642d5f4aa69fd169872f8fc3059c08ebae2eb19e7",
        "00a4b2856bfec510abab89753fac1ac0e1112364e7d250545963f135f2a33188ed",
    ),
    (
        "m/0'",
        "68e0fe46dfb67e368c75379acec591dad19df3cde26e63b93a8e704f1dade7a3",
        "008c8a13df77a28f3445213a0f432fde644acaa215fc72dcdf300d5efaa85d350c",
    ),
    (
        "m/0'/1'",
        "b1d0bad404bf35da785a64ca1ac54b2617211d2777696fbffaf208f746ae84f2",
        "001932a5270f335bed617d5b935c80aedb1a35bd9fc1e31acafd5372c30f5c1187",
    ),
    (
        "m/0'/1'/2'",
        "92a5b23c0b8a99e37d07df3fb9966917f5d06e02ddbd909c7e184371463e9fc9",
        "00ae98736566d30ed0e9d2f4486a64bc95740d89c7db33f52121f8ea8f76ff0fc1",
    ),
    (
        "m/0'/1'/2'/2'",
        "30d1dc7e5fc04c31219ab25a27ae00b50f6fd66622f6e9c913253d6511d1e662",
        "008abae2d66361c879b900d204ad2cc4984fa2aa344dd7ddc46007329ac76c429c",
    ),
    (
        "m/0'/1'/2'/2'/1000000000'",
        "8f94d394a8e8fd6b1bc2f3f49f5c47e385281d5c17e65324b0f62483e37e8793",
        "003c24da049451555d51a7014a37337aa4e12d41e485abccfa46b47dfb2af54b7a",
    ),
)

# near/near-seed-phrase, test/index.test.js, "parse seed phrase": parseSeedPhrase at its default path
# m/44'/397'/0' (index.js KEY_DERIVATION_PATH), mixed case as published (normalizeSeedPhrase lowercases).
SEED_PHRASE = "Shoot island position soft burden budget tooth cruel issue economy destroy Above"
SEED_PHRASE_SECRET_KEY = (
    "ed25519:3jFpZEcbhcjpqVE27zU3d7WHcS7Wq716v5WryU8Tj4EaNTHTj8iAhtPW7KCdFV2fnjNf9toawUbdqZnhrRtLKe6w"
)
SEED_PHRASE_PUBLIC_KEY = "ed25519:r4yuiZE45mzeZAENDEF2pWeFBJkW8mQYGx3rU46zCqh"

# The BIP-39 test mnemonic (chains.derivation.DEVELOPMENT_MNEMONIC) at m/44'/397'/0'. No NEAR-owned
# source publishes it; several unrelated public wallet test suites found by code search state this same
# value for "abandon ... about" at that path.
ABANDON_IMPLICIT = "5510e2b44cae6eb807e3e0e45d579dda058c274abcba15e5cb84636f5d1ee412"
