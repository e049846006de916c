"""The thin TRON client: addresses, the protobuf of the transactions Kassa signs (against TronWeb's own
encoder too), signatures, the node's JSON, and the java-tron HTTP client over a fake HTTP layer."""
