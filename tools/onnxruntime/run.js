#!/usr/bin/env node
// Runs an ONNX model on ONNX Runtime (npm onnxruntime-node, CPU, one thread) for
// `npu bench onnx --compare-onnxruntime` (docs/onnx.md).
//   node tools/onnxruntime/run.js MODEL.onnx --input NAME=IN.npy ... --out-dir DIR [--runs N]
// Writes each output as DIR/<index>.npy (float32, int32, uint8, int8 or int64) and prints one
// JSON line: {"onnxruntime_ms": median run time, "runs": N, "outputs": [{name, dims, file}],
// "version": ...}. onnxruntime-node is looked up in NODE_PATH, then in the models cache
// ($NPU_MODELS_DIR or ~/.cache/npu-stack/models, where scripts/fetch-models.sh --runtime puts it).
// Exit codes: 0 ok, 2 bad arguments or input, 3 onnxruntime-node missing, 1 a run failed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

function fail(code, message) {
  process.stderr.write(`onnxruntime/run.js: ${message}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], outDir: null, runs: 10 };
  for (let i = 0; i < argv.length; ++i) {
    const v = argv[i];
    if (v === '--input') a.inputs.push(argv[++i] || '');
    else if (v === '--out-dir') a.outDir = argv[++i];
    else if (v === '--runs') a.runs = Number(argv[++i]);
    else if (!a.model && !v.startsWith('--')) a.model = v;
    else fail(2, `unknown argument '${v}'`);
  }
  if (!a.model || !a.outDir) fail(2, 'usage: run.js MODEL.onnx --input NAME=FILE.npy ... --out-dir DIR [--runs N]');
  if (!Number.isInteger(a.runs) || a.runs < 1 || a.runs > 100000) fail(2, `--runs ${a.runs}: expected 1..100000`);
  return a;
}

function loadOrt() {
  const cache = process.env.NPU_MODELS_DIR || path.join(os.homedir(), '.cache', 'npu-stack', 'models');
  for (const from of [undefined, path.join(cache, 'node_modules', 'onnxruntime-node')]) {
    try {
      return from ? require(from) : require('onnxruntime-node');
    } catch (e) {
      if (from) fail(3, `onnxruntime-node is not installed (run scripts/fetch-models.sh --runtime): ${e.message}`);
    }
  }
}

const kTypes = {
  '<f4': ['float32', Float32Array], '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array],
  '|i1': ['int8', Int8Array], '<i8': ['int64', BigInt64Array],
};

function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.length < 10 || b.toString('latin1', 0, 6) !== '\x93NUMPY') fail(2, `${file}: not a .npy file`);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + hlen);
  const descr = (header.match(/'descr':\s*'([^']+)'/) || [])[1];
  const shape = ((header.match(/'shape':\s*\(([^)]*)\)/) || [])[1] || '').split(',').filter((s) => s.trim()).map(Number);
  if (/'fortran_order':\s*True/.test(header)) fail(2, `${file}: Fortran order is not taken`);
  if (!kTypes[descr]) fail(2, `${file}: dtype '${descr}' is not taken`);
  const [type, Arr] = kTypes[descr];
  const count = shape.reduce((x, y) => x * y, 1);
  const data = b.subarray(start + hlen);
  if (data.length < count * Arr.BYTES_PER_ELEMENT) fail(2, `${file}: ${data.length} data bytes, shape needs more`);
  const copy = new Uint8Array(count * Arr.BYTES_PER_ELEMENT);
  copy.set(data.subarray(0, copy.length));
  return { type, data: new Arr(copy.buffer), dims: shape };
}

function writeNpy(file, tensor) {
  const descr = Object.keys(kTypes).find((k) => kTypes[k][0] === tensor.type);
  if (!descr) fail(1, `output type ${tensor.type} has no .npy writer here`);
  const dims = tensor.dims.map(Number);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(d.buffer, d.byteOffset, d.byteLength)]));
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', executionProviders: ['cpu'],
    logSeverityLevel: 3,  // errors only: warnings (old opsets) are not failures
  });
  const feeds = {};
  args.inputs.forEach((spec, i) => {
    const eq = spec.indexOf('=');
    const name = eq > 0 ? spec.slice(0, eq) : session.inputNames[i];
    const t = readNpy(eq > 0 ? spec.slice(eq + 1) : spec);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  for (const name of session.inputNames) if (!feeds[name]) fail(2, `no --input for model input '${name}'`);
  let results = await session.run(feeds);  // warm-up, not timed
  const times = [];
  for (let r = 0; r < args.runs; ++r) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((x, y) => x - y);
  fs.mkdirSync(args.outDir, { recursive: true });
  const outputs = session.outputNames.map((name, i) => {
    const file = path.join(args.outDir, `${i}.npy`);
    writeNpy(file, results[name]);
    return { name, dims: results[name].dims.map(Number), file };
  });
  const version = (ort.env && ort.env.versions && ort.env.versions.common) || null;
  process.stdout.write(JSON.stringify({ onnxruntime_ms: times[Math.floor(times.length / 2)], runs: args.runs, threads: 1, version, outputs }) + '\n');
}

main().catch((e) => fail(1, e.message));
