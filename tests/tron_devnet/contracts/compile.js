// Compile TetherToken.sol into tether_token.json (ABI + bytecode) with the solc-js that hardhat pins
// (tests/hardhat/node_modules/solc; `make hardhat` installs it). Offline: solc-js carries its compiler.
//   node tests/tron_devnet/contracts/compile.js          write tether_token.json
//   node tests/tron_devnet/contracts/compile.js --print  print the JSON instead (the freshness test)
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");

const solc = require(path.join(__dirname, "..", "..", "hardhat", "node_modules", "solc"));

const source = fs.readFileSync(path.join(__dirname, "TetherToken.sol"), "utf8");
const input = {
  language: "Solidity",
  sources: { "TetherToken.sol": { content: source } },
  settings: {
    // TRON's TVM follows the EVM with a lag: no PUSH0 (shanghai) and no transient storage here.
    evmVersion: "paris",
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { TetherToken: ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  console.error(errors.map((e) => e.formattedMessage).join("\n"));
  process.exit(1);
}
const contract = output.contracts["TetherToken.sol"].TetherToken;
const fixture = {
  abi: contract.abi,
  bytecode: "0x" + contract.evm.bytecode.object,
  compiler: "solc " + solc.version(),
  source_sha256: crypto.createHash("sha256").update(source).digest("hex"),
};
const text = JSON.stringify(fixture, null, 1) + "\n";
if (process.argv.includes("--print")) {
  process.stdout.write(text);
} else {
  fs.writeFileSync(path.join(__dirname, "tether_token.json"), text);
  console.log("wrote tether_token.json (" + solc.version() + ")");
}
