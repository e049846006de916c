// Golden vectors from TronWeb's own code, offline (no node is asked): reads a JSON list of cases on stdin
// and prints one JSON list of answers, in order. chains/tron/tests/test_tronweb_vectors.py drives it.
//   {"kind": "transaction", "transaction": {"raw_data": ..., "visible": false}, "private_key": "<hex>"}
//     -> {"raw_data_hex", "txID", "signature"}: TronWeb's protobuf (txJsonToPb) and signature
//   {"kind": "raw", "raw_data_hex": "<hex>"} -> {"raw_data_hex", "txID"}: TronWeb's protobuf reading back
//   {"kind": "address", "hex": "41..."} -> {"base58", "hex"}: address.fromHex, then toHex of that
//   {"kind": "key", "private_key": "<hex>"} -> {"base58"}: address.fromPrivateKey
'use strict';
const { utils } = require('tronweb');

function answer(item) {
    switch (item.kind) {
        case 'transaction': {
            const pb = utils.transaction.txJsonToPb(item.transaction);
            const txID = utils.transaction.txPbToTxID(pb).replace(/^0x/, '');
            const signed = utils.crypto.signTransaction(item.private_key, { txID });
            return {
                raw_data_hex: utils.transaction.txPbToRawDataHex(pb).toLowerCase(),
                txID,
                signature: signed.signature[0].toLowerCase(),
            };
        }
        case 'raw': {
            const { Transaction } = globalThis.TronWebProto;
            const raw = Transaction.raw.deserializeBinary(Buffer.from(item.raw_data_hex, 'hex'));
            const bytes = raw.serializeBinary();
            return {
                raw_data_hex: Buffer.from(bytes).toString('hex'),
                txID: utils.crypto.SHA256(Array.from(bytes)).map((b) => b.toString(16).padStart(2, '0')).join(''),
            };
        }
        case 'address': {
            const base58 = utils.address.fromHex(item.hex);
            return { base58, hex: utils.address.toHex(base58).toLowerCase() };
        }
        case 'key':
            return { base58: utils.address.fromPrivateKey(item.private_key) };
        default:
            throw new Error('unknown case kind: ' + item.kind);
    }
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
    process.stdout.write(JSON.stringify(JSON.parse(input).map(answer)) + '\n');
});
