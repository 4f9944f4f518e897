// A resident snarkjs prover (the "warm" snarkjs of cuzk.bench.cpu_vs_snarkjs): loads snarkjs and its
// curve once, reads the zkey and witness into memory once, then proves once per line on stdin and
// answers one JSON line {"ms": ...} per proof. Usage: node snarkjs_warm.js SNARKJS_DIR ZKEY WTNS
const fs = require("fs");
const readline = require("readline");
const [snarkjsDir, zkeyPath, wtnsPath] = process.argv.slice(2);
const snarkjs = require(snarkjsDir);

async function main() {
  const zkey = { type: "mem", data: new Uint8Array(fs.readFileSync(zkeyPath)) };
  const wtns = { type: "mem", data: new Uint8Array(fs.readFileSync(wtnsPath)) };
  await snarkjs.groth16.prove(zkey, wtns); // warm-up: curve, wasm and worker threads started
  process.stdout.write("ready\n");
  const rl = readline.createInterface({ input: process.stdin });
  for await (const _line of rl) {
    const t = process.hrtime.bigint();
    const { proof, publicSignals } = await snarkjs.groth16.prove(zkey, wtns);
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    process.stdout.write(JSON.stringify({ ms, rss_kb: Math.round(process.memoryUsage().rss / 1024), curve: proof.curve, n_public: publicSignals.length }) + "\n");
  }
  process.exit(0); // snarkjs' worker threads would keep the process alive
}
main().catch((e) => { console.error(e); process.exit(1); });
