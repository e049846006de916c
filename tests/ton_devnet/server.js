#!/usr/bin/env node
// The TON devnet of Kassa's tests: toncenter's API v2 (the subset Kassa uses) over @ton/sandbox, whose
// emulator runs the real wallet contracts in a WASM TVM. Loopback only; state in memory; one process, one
// chain. See docs/ton.md for what it is and is not.
//
//   node tests/ton_devnet/server.js [--port N] [--api-key KEY]
//
// Prints one JSON line {"url": ..., "faucet": ...} on standard output once it serves.
//
// Toncenter's answers (ton-http-api-cpp, API v2): {"ok": true, "result": ..., "@extra": ...} with HTTP 200,
// or {"ok": false, "error": ..., "code": N} with HTTP status N. Methods are served under /api/v2/ by GET
// (query parameters) and POST (a JSON body), and /api/v2/jsonRPC. The test controls are under /devnet/.
//
// Blocks: every batch of transactions (one message and everything it causes, a bounce included) is one
// masterchain block; getMasterchainInfo's seqno grows by one per batch, and /devnet/mine adds empty ones.
'use strict';

const http = require('node:http');
const crypto = require('node:crypto');
const { Blockchain } = require('@ton/sandbox');
const {
    Address,
    Cell,
    beginCell,
    comment: commentCell,
    external,
    internal,
    loadMessage,
    storeMessage,
    SendMode,
} = require('@ton/core');
const { WalletContractV4 } = require('@ton/ton');
const { keyPairFromSeed, keyPairFromSecretKey, mnemonicToPrivateKey } = require('@ton/crypto');

const SHARD = '-9223372036854775808';
const ZERO_HASH = Buffer.alloc(32).toString('base64');
const DEFAULT_CUSTOMER_BALANCE = 100_000_000_000n; // 100 TON
const BOC = { idx: false, crc32: false }; // tonlib's std_boc_serialize
// Code hashes of the wallets getWalletInformation recognises (ton-http-api-cpp's table).
const WALLETS = {
    'hNr6RJ+Ypph3ibojI1gHK8D3bcRSQAKl0JGLmnXS1Zk=': ['wallet v3 r2', 'v3'],
    'thBBpYp5gLlG6PueGY48kE0keZ/6NldOpCUcQaVm9YE=': ['wallet v3 r1', 'v3'],
    'ZN1UgFUixb6KnbWc6gEFzPDQh4bKeb64y3nogKjXMi0=': ['wallet v4 r1', 'v3'],
    '/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=': ['wallet v4 r2', 'v3'],
    'IINLe3KxEhR+Gy+0V7hOdNGjDwT3N9T2KmaOlVLSty8=': ['wallet v5 r1', 'v5'],
};

class ApiError extends Error {
    constructor(code, message) {
        super(message);
        this.code = code;
    }
}

// --- the chain -----------------------------------------------------------------------------------------

class Devnet {
    static async create() {
        const devnet = new Devnet();
        devnet.chain = await Blockchain.create();
        devnet.chain.verbosity = { print: false, blockchainLogs: false, vmLogs: 'none', debugLogs: false };
        devnet.tick();
        devnet.faucet = await devnet.chain.treasury('faucet', { balance: 10n ** 18n, resetBalanceIfZero: true });
        devnet.blocks = [devnet.block(0)];
        devnet.txs = new Map(); // "wc:hex" -> [record, ...] oldest first
        devnet.customers = new Map(); // "wc:hex" -> {wallet, keyPair}
        devnet.queue = Promise.resolve();
        await devnet.commit([]); // seqno 1: the faucet exists
        return devnet;
    }

    constructor() {
        this.offset = 0; // seconds added to the wall clock by /devnet/time
        this.lastNow = 0;
    }

    now() {
        return Math.max(this.lastNow, Math.floor(Date.now() / 1000) + this.offset);
    }

    tick() {
        this.lastNow = this.now();
        this.chain.now = this.lastNow;
        return this.lastNow;
    }

    block(seqno) {
        const hash = (what) => crypto.createHash('sha256').update(`kassa-ton-devnet ${what} ${seqno}`).digest();
        return { seqno, utime: this.lastNow, root_hash: hash('root'), file_hash: hash('file') };
    }

    // One change of the chain at a time: HTTP requests come concurrently.
    exclusive(fn) {
        const run = this.queue.then(fn, fn);
        this.queue = run.catch(() => undefined);
        return run;
    }

    // A new masterchain block holding `transactions` (as the sandbox returns them).
    async commit(transactions) {
        const block = this.block(this.blocks.length);
        this.blocks.push(block);
        for (const tx of transactions) {
            const dest = tx.inMessage && tx.inMessage.info.dest;
            const workchain = dest && Address.isAddress(dest) ? dest.workChain : 0;
            const address = new Address(workchain, bigintBytes(tx.address));
            const key = rawKey(address);
            if (!this.txs.has(key)) this.txs.set(key, []);
            this.txs.get(key).push({ tx, address, seqno: block.seqno });
        }
        return block;
    }

    last() {
        return this.blocks[this.blocks.length - 1];
    }

    // Send `message` (a Message or its Cell) and record its transactions in one block.
    async send(message, params = {}) {
        this.tick();
        const result = await this.chain.sendMessage(message, params);
        const block = await this.commit(result.transactions);
        return { result, block };
    }

    async contract(address) {
        return this.chain.getContract(address);
    }
}

function bigintBytes(value) {
    return Buffer.from(value.toString(16).padStart(64, '0'), 'hex');
}

function rawKey(address) {
    return `${address.workChain}:${address.hash.toString('hex')}`;
}

// --- toncenter's shapes --------------------------------------------------------------------------------

function friendly(address) {
    return address.toString({ urlSafe: true, bounceable: true, testOnly: false });
}

function rawForm(address) {
    return `${address.workChain}:${address.hash.toString('hex').toUpperCase()}`;
}

function blockId(block) {
    return {
        '@type': 'ton.blockIdExt',
        workchain: -1,
        shard: SHARD,
        seqno: block.seqno,
        root_hash: block.root_hash.toString('base64'),
        file_hash: block.file_hash.toString('base64'),
    };
}

function transactionId(lt, hash) {
    return { '@type': 'internal.transactionId', lt: String(lt), hash: hash ? hash.toString('base64') : ZERO_HASH };
}

function boc(cell) {
    return cell.toBoc(BOC).toString('base64');
}

// tonlib's CellString::load: the bytes of the slice and of its chain of first references.
function snakeBytes(slice) {
    const parts = [];
    for (let depth = 0; ; depth++) {
        if (slice.remainingBits % 8 !== 0 || depth > 16) return null;
        parts.push(slice.loadBuffer(slice.remainingBits / 8));
        if (slice.remainingRefs === 0) break;
        slice = slice.loadRef().beginParse();
    }
    return Buffer.concat(parts);
}

// msg_data and message as ton-http-api-cpp writes them (tonlib decodes op 0 as a text comment).
function messageData(body) {
    const slice = body.beginParse(true);
    if (slice.remainingBits >= 32) {
        const op = slice.loadUint(32);
        if (op <= 1) {
            const bytes = snakeBytes(slice);
            if (bytes !== null) {
                const type = op === 0 ? 'msg.dataText' : 'msg.dataEncryptedText';
                return { data: { '@type': type, text: bytes.toString('base64') }, message: bytes.toString('utf8') };
            }
        }
    }
    const bits = body.bits.length;
    let message = '';
    if (bits > 0) {
        const slice = body.beginParse(true);
        const rest = bits % 8;
        let bytes = slice.loadBuffer((bits - rest) / 8);
        if (rest) bytes = Buffer.concat([bytes, Buffer.from([slice.loadUint(rest) << (8 - rest)])]);
        message = bytes.toString('base64') + '\n';
    }
    return { data: { '@type': 'msg.dataRaw', body: boc(body), init_state: '' }, message };
}

function messageJson(message) {
    const cell = beginCell().store(storeMessage(message)).endCell();
    const info = message.info;
    const out = {
        '@type': 'ext.message',
        hash: cell.hash().toString('base64'),
        source: info.src && Address.isAddress(info.src) ? friendly(info.src) : '',
        destination: info.dest && Address.isAddress(info.dest) ? friendly(info.dest) : '',
        value: info.type === 'internal' ? String(info.value.coins) : '0',
        extra_currencies: [],
        fwd_fee: info.type === 'internal' ? String(info.forwardFee) : '0',
        ihr_fee: info.type === 'internal' ? String(info.ihrFee) : '0',
        created_lt: info.type === 'external-in' ? '0' : String(info.createdLt),
        body_hash: message.body.hash().toString('base64'),
    };
    const { data, message: text } = messageData(message.body);
    out.msg_data = data;
    out.message = text;
    return out;
}

function transactionJson(record) {
    const { tx, address } = record;
    let fee = tx.totalFees.coins;
    const outs = [];
    for (const message of tx.outMessages.values()) {
        if (message.info.type === 'internal') fee += message.info.forwardFee + message.info.ihrFee;
        outs.push(message);
    }
    const storage = (tx.description.storagePhase && tx.description.storagePhase.storageFeesCollected) || 0n;
    return {
        '@type': 'ext.transaction',
        address: { '@type': 'accountAddress', account_address: friendly(address) },
        account: rawForm(address),
        utime: tx.now,
        data: boc(tx.raw),
        transaction_id: transactionId(tx.lt, tx.hash()),
        fee: String(fee),
        storage_fee: String(storage),
        other_fee: String(fee - storage),
        ...(tx.inMessage ? { in_msg: messageJson(tx.inMessage) } : {}),
        out_msgs: outs.map(messageJson),
    };
}

function stateOf(contract) {
    const state = contract.accountState;
    if (!state || state.type === 'uninit') return { state: 'uninitialized', code: '', data: '', frozen: '' };
    if (state.type === 'frozen') {
        return { state: 'frozen', code: '', data: '', frozen: bigintBytes(state.stateHash).toString('base64') };
    }
    return {
        state: 'active',
        code: state.state.code ? boc(state.state.code) : '',
        data: state.state.data ? boc(state.state.data) : '',
        codeCell: state.state.code,
        dataCell: state.state.data,
        frozen: '',
    };
}

function lastTransaction(contract) {
    const lt = contract.lastTransactionLt;
    return lt ? transactionId(lt, bigintBytes(contract.lastTransactionHash)) : transactionId(0n, null);
}

function stackItemJson(item) {
    switch (item.type) {
        case 'int':
            return ['num', item.value < 0n ? `-0x${(-item.value).toString(16)}` : `0x${item.value.toString(16)}`];
        case 'null':
            return ['null', null];
        case 'cell':
        case 'slice':
        case 'builder':
            return ['cell', { bytes: boc(item.cell) }];
        case 'tuple':
            return ['tuple', { '@type': 'tvm.tuple', elements: item.items.map(stackItemJson) }];
        default:
            return ['unsupported', null];
    }
}

function stackItemIn(entry) {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string') {
        throw new ApiError(422, 'Expected 2 elements in stack entry');
    }
    const [type, value] = entry;
    if (['num', 'int', 'number', 'integer'].includes(type)) {
        try {
            return { type: 'int', value: BigInt(value) };
        } catch {
            throw new ApiError(422, `Invalid number: ${value}`);
        }
    }
    if (type === 'tvm.Cell') return { type: 'cell', cell: Cell.fromBase64(value) };
    if (type === 'tvm.Slice') return { type: 'slice', cell: Cell.fromBase64(value) };
    throw new ApiError(422, `Unsupported stack entry type: ${type}`);
}

// --- parameters ----------------------------------------------------------------------------------------

function parseAddress(text) {
    if (typeof text !== 'string' || !text) throw new ApiError(416, 'Incorrect address');
    try {
        return Address.parse(text);
    } catch {
        throw new ApiError(416, 'Incorrect address');
    }
}

function parseHash(text) {
    if (typeof text !== 'string') throw new ApiError(422, 'invalid hash');
    let bytes = null;
    if (text.length === 64 && /^[0-9a-fA-F]+$/.test(text)) bytes = Buffer.from(text, 'hex');
    else if (text.length === 44 || text.length === 43) bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (!bytes || bytes.length !== 32) throw new ApiError(422, `invalid hash: '${text}'`);
    return bytes;
}

function parseInteger(value, name, fallback) {
    if (value === undefined || value === null || value === '') return fallback;
    if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
    if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
    throw new ApiError(422, `Can't parse integer in parameter ${name}`);
}

function parseBoc(text, name) {
    if (typeof text !== 'string') throw new ApiError(422, `${name}: invalid base64 encoded bytes`);
    if (text === '') return null;
    try {
        return Cell.fromBase64(text);
    } catch {
        throw new ApiError(400, `INVALID_BAG_OF_CELLS: ${name}`);
    }
}

// --- the API methods -----------------------------------------------------------------------------------

function api(devnet) {
    const accountState = async (params) => {
        const contract = await devnet.contract(parseAddress(params.address));
        return { contract, state: stateOf(contract) };
    };

    return {
        async getMasterchainInfo() {
            const last = devnet.last();
            return {
                '@type': 'blocks.masterchainInfo',
                last: blockId(last),
                state_root_hash: crypto.createHash('sha256').update(last.root_hash).digest('base64'),
                init: blockId(devnet.blocks[0]),
            };
        },

        async getAddressInformation(params) {
            const { contract, state } = await accountState(params);
            return {
                '@type': 'raw.fullAccountState',
                balance: String(contract.balance < 0n ? 0n : contract.balance),
                extra_currencies: [],
                code: state.code,
                data: state.data,
                last_transaction_id: lastTransaction(contract),
                block_id: blockId(devnet.last()),
                frozen_hash: state.frozen,
                sync_utime: devnet.now(),
                state: state.state,
            };
        },

        async getAddressBalance(params) {
            const { contract } = await accountState(params);
            return String(contract.balance < 0n ? 0n : contract.balance);
        },

        async getWalletInformation(params) {
            const { contract, state } = await accountState(params);
            const result = {
                '@type': 'ext.accounts.walletInformation',
                wallet: false,
                balance: String(contract.balance < 0n ? 0n : contract.balance),
                account_state: state.state,
                last_transaction_id: lastTransaction(contract),
            };
            const known = state.codeCell && WALLETS[state.codeCell.hash().toString('base64')];
            if (known && state.dataCell) {
                const data = state.dataCell.beginParse();
                result.wallet_type = known[0];
                if (known[1] === 'v5') result.is_signature_allowed = data.loadBit();
                result.seqno = data.loadUint(32);
                result.wallet_id = data.loadInt(32);
                result.wallet = true;
            }
            return result;
        },

        async getTransactions(params) {
            const address = parseAddress(params.address);
            const limit = Number(parseInteger(params.limit, 'limit', 10n));
            if (limit < 1 || limit > 100) throw new ApiError(422, 'limit: must be between 1 and 100');
            const toLt = parseInteger(params.to_lt, 'to_lt', 0n);
            const lt = parseInteger(params.lt, 'lt', null);
            const hash = params.hash === undefined || params.hash === '' ? null : parseHash(params.hash);
            const records = devnet.txs.get(rawKey(address)) || [];
            let start = records.length - 1;
            if (lt !== null && hash !== null) {
                start = records.findIndex((r) => r.tx.lt === lt && r.tx.hash().equals(hash));
                if (start < 0) {
                    throw new ApiError(500, 'LITE_SERVER_UNKNOWN: cannot locate transaction in block with specified logical time');
                }
            }
            const result = [];
            for (let i = start; i >= 0 && result.length < limit; i--) {
                if (records[i].tx.lt <= toLt) break;
                result.push(transactionJson(records[i]));
            }
            return result;
        },

        async runGetMethod(params) {
            const address = parseAddress(params.address);
            const stack = (params.stack || []).map(stackItemIn);
            const method = typeof params.method === 'string' && /^\d+$/.test(params.method) ? Number(params.method) : params.method;
            const contract = await devnet.contract(address);
            const base = { block_id: blockId(devnet.last()), last_transaction_id: lastTransaction(contract) };
            if (!contract.accountState || contract.accountState.type !== 'active') {
                return { '@type': 'smc.runResult', gas_used: 0, stack: [], exit_code: -13, ...base };
            }
            try {
                const run = await devnet.chain.runGetMethod(address, method, stack, { now: devnet.now() });
                return {
                    '@type': 'smc.runResult',
                    gas_used: Number(run.gasUsed),
                    stack: run.stack.map(stackItemJson),
                    exit_code: run.exitCode,
                    ...base,
                };
            } catch (exc) {
                if (exc && typeof exc.exitCode === 'number') {
                    return { '@type': 'smc.runResult', gas_used: Number(exc.gasUsed || 0), stack: [], exit_code: exc.exitCode, ...base };
                }
                throw exc;
            }
        },

        async sendBoc(params) {
            await sendExternal(devnet, params.boc);
            return { '@type': 'ok' };
        },

        async sendBocReturnHash(params) {
            const { cell, message } = await sendExternal(devnet, params.boc);
            return { '@type': 'raw.extMessageInfo', hash: cell.hash().toString('base64'), hash_norm: normalizedHash(message).toString('base64') };
        },

        async estimateFee(params) {
            const address = parseAddress(params.address);
            const body = parseBoc(params.body, 'body') || beginCell().endCell();
            const code = parseBoc(params.init_code || '', 'init_code');
            const data = parseBoc(params.init_data || '', 'init_data');
            const init = code || data ? { code: code || undefined, data: data || undefined } : undefined;
            const message = external({ to: address, init, body });
            const ignoreChksig = params.ignore_chksig === undefined ? true : params.ignore_chksig !== false && params.ignore_chksig !== 'false';
            return devnet.exclusive(async () => {
                const snapshot = devnet.chain.snapshot();
                try {
                    devnet.tick();
                    const result = await devnet.chain.sendMessage(message, { ignoreChksig });
                    const tx = result.transactions[0];
                    const d = tx.description;
                    const storage = (d.storagePhase && d.storagePhase.storageFeesCollected) || 0n;
                    const gas = d.computePhase && d.computePhase.type === 'vm' ? d.computePhase.gasFees : 0n;
                    const actionFees = (d.actionPhase && d.actionPhase.totalActionFees) || 0n;
                    const fwd = (d.actionPhase && d.actionPhase.totalFwdFees) || 0n;
                    const fees = (inFwd, st, g, f) => ({ '@type': 'fees', in_fwd_fee: Number(inFwd), storage_fee: Number(st), gas_fee: Number(g), fwd_fee: Number(f) });
                    return {
                        '@type': 'query.fees',
                        source_fees: fees(tx.totalFees.coins - storage - gas - actionFees, storage, gas, fwd),
                        destination_fees: [],
                    };
                } catch (exc) {
                    throw rejected(address, exc);
                } finally {
                    await devnet.chain.loadFrom(snapshot);
                }
            });
        },
    };
}

function rejected(address, exc) {
    if (exc && exc.constructor && exc.constructor.name === 'EmulationError') {
        return new ApiError(
            500,
            'LITE_SERVER_UNKNOWN: cannot apply external message to current state : External message was not accepted\n' +
                `Cannot run message on account: inbound external message rejected by transaction ${address.hash.toString('hex').toUpperCase()}:\n` +
                `exitcode=${exc.exitCode === undefined ? 0 : exc.exitCode}, steps=0, gas_used=0`,
        );
    }
    return exc;
}

// TEP-467: the hash of an external-in message with src, import_fee and init left out and the body a reference.
function normalizedHash(message) {
    return beginCell()
        .storeUint(2, 2)
        .storeUint(0, 2)
        .storeAddress(message.info.dest)
        .storeCoins(0)
        .storeBit(false)
        .storeBit(true)
        .storeRef(message.body)
        .endCell()
        .hash();
}

async function sendExternal(devnet, text) {
    const cell = parseBoc(text === undefined ? undefined : text, 'boc');
    if (!cell) throw new ApiError(422, 'boc: required');
    let message;
    try {
        message = loadMessage(cell.beginParse());
    } catch {
        throw new ApiError(400, 'INVALID_BAG_OF_CELLS: not a message');
    }
    if (message.info.type !== 'external-in') throw new ApiError(400, 'Not an external inbound message');
    return devnet.exclusive(async () => {
        try {
            await devnet.send(cell);
        } catch (exc) {
            throw rejected(message.info.dest, exc);
        }
        return { cell, message };
    });
}

// --- the test controls ---------------------------------------------------------------------------------

function nanotons(value, name, fallback) {
    const amount = parseInteger(value, name, fallback);
    if (amount === null || amount < 0n) throw new ApiError(422, `${name}: a number of nanotons`);
    return amount;
}

function summary(devnet, sent) {
    return {
        seqno: sent.block.seqno,
        transactions: sent.result.transactions.map((tx) => {
            const dest = tx.inMessage && tx.inMessage.info.dest;
            const address = new Address(dest && Address.isAddress(dest) ? dest.workChain : 0, bigintBytes(tx.address));
            const compute = tx.description.computePhase;
            return {
                address: friendly(address),
                lt: String(tx.lt),
                hash: tx.hash().toString('base64'),
                aborted: Boolean(tx.description.aborted),
                exit_code: compute && compute.type === 'vm' ? compute.exitCode : null,
            };
        }),
    };
}

function wantBounce(text, given) {
    if (given !== undefined && given !== null) return Boolean(given);
    try {
        return Address.parseFriendly(text).isBounceable; // as a wallet app reads the address's own flag
    } catch {
        return true; // raw form: bounceable, as toncenter's wallets default
    }
}

function controls(devnet) {
    const walletFor = (keyPair, walletId) =>
        WalletContractV4.create({ workchain: 0, publicKey: keyPair.publicKey, walletId: walletId === undefined ? undefined : Number(walletId) });

    const deploy = async (wallet, balance) => {
        const opened = devnet.chain.openContract(wallet);
        devnet.tick();
        const result = await devnet.faucet.send({ to: wallet.address, value: balance, init: wallet.init, bounce: false });
        const block = await devnet.commit(result.transactions);
        return { opened, sent: { result, block } };
    };

    return {
        async info() {
            return { faucet: friendly(devnet.faucet.address), seqno: devnet.last().seqno, now: devnet.now(), offset: devnet.offset };
        },

        // A wallet v4R2 for `public_key` (hex) or `mnemonic` (24 words, TON's own derivation), deployed by
        // the faucet with `balance` nanotons (deploy: false leaves it uninitialized, with that balance).
        async wallet(body) {
            let publicKey;
            if (body.mnemonic) publicKey = (await mnemonicToPrivateKey(String(body.mnemonic).trim().split(/\s+/))).publicKey;
            else if (/^[0-9a-fA-F]{64}$/.test(body.public_key || '')) publicKey = Buffer.from(body.public_key, 'hex');
            else throw new ApiError(422, 'public_key (64 hex digits) or mnemonic');
            const wallet = walletFor({ publicKey }, body.wallet_id);
            const balance = nanotons(body.balance, 'balance', 10_000_000_000n);
            return devnet.exclusive(async () => {
                let sent;
                if (body.deploy === false) {
                    devnet.tick();
                    const result = await devnet.faucet.send({ to: wallet.address, value: balance, bounce: false });
                    sent = { result, block: await devnet.commit(result.transactions) };
                } else {
                    sent = (await deploy(wallet, balance)).sent;
                }
                return {
                    address: friendly(wallet.address),
                    raw: rawForm(wallet.address),
                    public_key: publicKey.toString('hex'),
                    wallet_id: wallet.walletId,
                    ...summary(devnet, sent),
                };
            });
        },

        // A customer's wallet v4R2 with a key the devnet keeps, deployed with `balance` nanotons.
        async customer(body) {
            const keyPair = keyPairFromSeed(crypto.randomBytes(32));
            const wallet = walletFor(keyPair);
            const balance = nanotons(body.balance, 'balance', DEFAULT_CUSTOMER_BALANCE);
            return devnet.exclusive(async () => {
                const { opened, sent } = await deploy(wallet, balance);
                devnet.customers.set(rawKey(wallet.address), { opened, keyPair });
                return { address: friendly(wallet.address), raw: rawForm(wallet.address), ...summary(devnet, sent) };
            });
        },

        // The customer `from` pays `amount` nanotons to `to` through its wallet (a signed external message),
        // with a text `comment` or none; `bounce` defaults to the flag of `to`'s own form.
        async pay(body) {
            const from = parseAddress(body.from);
            const customer = devnet.customers.get(rawKey(from));
            if (!customer) throw new ApiError(404, 'not a customer of this devnet');
            const to = parseAddress(body.to);
            const amount = nanotons(body.amount, 'amount', null);
            return devnet.exclusive(async () => {
                const seqno = await customer.opened.getSeqno();
                const now = devnet.tick();
                const transfer = customer.opened.createTransfer({
                    seqno,
                    secretKey: customer.keyPair.secretKey,
                    timeout: now + 60,
                    sendMode: body.send_mode === undefined ? SendMode.PAY_GAS_SEPARATELY | SendMode.IGNORE_ERRORS : Number(body.send_mode),
                    messages: [
                        internal({
                            to,
                            value: amount,
                            bounce: wantBounce(body.to, body.bounce),
                            body: body.comment === undefined || body.comment === null ? undefined : commentCell(String(body.comment)),
                        }),
                    ],
                });
                const sent = await devnet.send(external({ to: customer.opened.address, body: transfer }));
                return summary(devnet, sent);
            });
        },

        // The faucet sends `amount` nanotons to `address` (non-bounceable unless `bounce`), with `comment`.
        async fund(body) {
            const to = parseAddress(body.address);
            const amount = nanotons(body.amount, 'amount', null);
            return devnet.exclusive(async () => {
                devnet.tick();
                const result = await devnet.faucet.send({
                    to,
                    value: amount,
                    bounce: Boolean(body.bounce),
                    body: body.comment === undefined || body.comment === null ? undefined : commentCell(String(body.comment)),
                });
                return summary(devnet, { result, block: await devnet.commit(result.transactions) });
            });
        },

        // Move the clock forward by `advance` seconds (never back: contracts refuse time going backwards).
        async time(body) {
            const advance = Number(parseInteger(body.advance, 'advance', 0n));
            if (advance < 0) throw new ApiError(422, 'advance: time only moves forward');
            return devnet.exclusive(async () => {
                devnet.offset += advance;
                devnet.tick();
                return { now: devnet.now(), offset: devnet.offset };
            });
        },

        // `blocks` empty masterchain blocks.
        async mine(body) {
            const count = Number(parseInteger(body.blocks, 'blocks', 1n));
            return devnet.exclusive(async () => {
                devnet.tick();
                for (let i = 0; i < count; i++) await devnet.commit([]);
                return { seqno: devnet.last().seqno };
            });
        },

        // @ton/ton's own external message for a wallet v4R2 transfer (nothing is sent): the reference the
        // Python builder (chains/ton/wallet.py) is compared with, byte for byte.
        async v4_transfer(body) {
            if (!/^[0-9a-fA-F]{64}$/.test(body.seed || '')) throw new ApiError(422, 'seed: 64 hex digits');
            const keyPair = keyPairFromSeed(Buffer.from(body.seed, 'hex'));
            const wallet = walletFor(keyPair, body.wallet_id);
            const transfer = wallet.createTransfer({
                seqno: Number(body.seqno),
                secretKey: keyPair.secretKey,
                timeout: Number(body.valid_until),
                sendMode: Number(body.send_mode === undefined ? SendMode.PAY_GAS_SEPARATELY | SendMode.IGNORE_ERRORS : body.send_mode),
                messages: [
                    internal({
                        to: parseAddress(body.to),
                        value: nanotons(body.amount, 'amount', null),
                        bounce: wantBounce(body.to, body.bounce),
                        body: body.comment === undefined || body.comment === null ? undefined : commentCell(String(body.comment)),
                    }),
                ],
            });
            const init = Number(body.seqno) === 0 && body.with_init ? wallet.init : undefined;
            const message = beginCell().store(storeMessage(external({ to: wallet.address, init, body: transfer }))).endCell();
            return { boc: boc(message), address: friendly(wallet.address), public_key: keyPair.publicKey.toString('hex') };
        },
    };
}

// --- HTTP ----------------------------------------------------------------------------------------------

function extra() {
    return `${(Date.now() / 1000).toFixed(6)}:0:0.${crypto.randomBytes(4).readUInt32BE(0)}`;
}

function reply(response, status, body) {
    const text = JSON.stringify(body);
    response.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    response.end(text);
}

function readBody(request) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let size = 0;
        request.on('data', (chunk) => {
            size += chunk.length;
            if (size > 4 * 1024 * 1024) reject(new ApiError(413, 'request too large'));
            else chunks.push(chunk);
        });
        request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        request.on('error', reject);
    });
}

async function main() {
    const args = process.argv.slice(2);
    const option = (name, fallback) => {
        const at = args.indexOf(name);
        return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
    };
    const port = Number(option('--port', '0'));
    const apiKey = option('--api-key', '');

    const devnet = await Devnet.create();
    const methods = api(devnet);
    const tests = controls(devnet);

    const server = http.createServer(async (request, response) => {
        const url = new URL(request.url, 'http://127.0.0.1');
        const path = url.pathname.replace(/\/+$/, '');
        try {
            let params = Object.fromEntries(url.searchParams.entries());
            if (request.method === 'POST') {
                const text = await readBody(request);
                if (text.trim()) {
                    let body;
                    try {
                        body = JSON.parse(text);
                    } catch {
                        throw new ApiError(422, 'failed to parse post request: not JSON');
                    }
                    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
                        throw new ApiError(422, 'failed to parse post request: not an object');
                    }
                    params = { ...params, ...body };
                }
            } else if (request.method !== 'GET') {
                throw new ApiError(405, `unsupported http method: ${request.method}`);
            }

            if (path.startsWith('/devnet/')) {
                const name = path.slice('/devnet/'.length).replace(/-/g, '_');
                if (!Object.prototype.hasOwnProperty.call(tests, name)) throw new ApiError(404, 'no such control');
                reply(response, 200, await tests[name](params));
                return;
            }
            if (!path.startsWith('/api/v2/')) throw new ApiError(404, 'Not Found');
            const key = request.headers['x-api-key'] || url.searchParams.get('api_key') || '';
            if (apiKey && key !== apiKey) throw new ApiError(401, 'API key does not exist');
            let name = path.slice('/api/v2/'.length);
            let rpc = null;
            if (name === 'jsonRPC') {
                if (request.method !== 'POST') throw new ApiError(405, 'unsupported http method: GET');
                rpc = { jsonrpc: '2.0', id: params.id === undefined ? null : params.id };
                name = params.method;
                params = params.params || {};
            }
            if (!Object.prototype.hasOwnProperty.call(methods, name)) {
                if (rpc) {
                    reply(response, 422, { ok: false, error: 'Unknown method', code: 422, ...rpc });
                    return;
                }
                throw new ApiError(404, 'Not Found');
            }
            const result = await methods[name](params);
            reply(response, 200, { ok: true, result, '@extra': extra(), ...(rpc || {}) });
        } catch (exc) {
            const code = exc instanceof ApiError ? exc.code : 500;
            const message = exc instanceof ApiError ? exc.message : `devnet: ${exc && exc.message ? exc.message : exc}`;
            if (!(exc instanceof ApiError)) process.stderr.write(`${exc && exc.stack ? exc.stack : exc}\n`);
            reply(response, code, { ok: false, error: message, code });
        }
    });
    server.listen(port, '127.0.0.1', () => {
        const { port: bound } = server.address();
        process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${bound}`, faucet: friendly(devnet.faucet.address) })}\n`);
    });
    const stop = () => server.close(() => process.exit(0));
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}

main().catch((exc) => {
    process.stderr.write(`${exc && exc.stack ? exc.stack : exc}\n`);
    process.exit(1);
});
