// faultline runtimes test (selftests/runtimes/run.sh): V8's WebAssembly
// trap handler.  On x86-64 Linux V8 reserves a guard region around each
// wasm memory and compiles loads without bounds checks; an out-of-bounds
// load faults (SIGSEGV) and Node's handler (v8::TryHandleWebAssemblyTrapPosix)
// turns the fault into a WebAssembly.RuntimeError.  Run in the main thread
// and in worker threads, many times each, so that the functions also tier up
// from Liftoff to TurboFan.  Everything printed is deterministic.
//
//   node wasm-oob.js ITERATIONS WORKERS
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const fs = require('fs');

// The module, assembled by hand:
//   (memory (export "mem") 1 1)
//   (func (export "load")    (param i32) (result i32) (i32.load (local.get 0)))
//   (func (export "loadFar") (param i32) (result i32)
//         (i32.load offset=0xfffffff0 (local.get 0)))
//   (func (export "load64")  (param i32) (result i64) (i64.load (local.get 0)))
function leb(n) {  // unsigned LEB128
	const out = [];
	do {
		let b = n % 128;
		n = Math.floor(n / 128);
		if (n > 0) b |= 0x80;
		out.push(b);
	} while (n > 0);
	return out;
}
function vec(items) {
	return [...leb(items.length), ...items.flat()];
}
function name(s) {
	return [...leb(s.length), ...Buffer.from(s, 'ascii')];
}
function section(id, content) {
	return [id, ...leb(content.length), ...content];
}
function body(code) {
	const b = [0x00 /* no locals */, ...code, 0x0b /* end */];
	return [...leb(b.length), ...b];
}
const I32 = 0x7f, I64 = 0x7e;
const wasm = new Uint8Array([
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,          // \0asm, version 1
	...section(1, vec([[0x60, 1, I32, 1, I32],              // type 0: i32 -> i32
	                   [0x60, 1, I32, 1, I64]])),           // type 1: i32 -> i64
	...section(3, vec([[0], [0], [1]])),                    // functions' types
	...section(5, vec([[0x01, 1, 1]])),                     // memory: min 1, max 1 page
	...section(7, vec([[...name('load'), 0x00, 0],          // exports
	                   [...name('loadFar'), 0x00, 1],
	                   [...name('load64'), 0x00, 2],
	                   [...name('mem'), 0x02, 0]])),
	...section(10, vec([
		body([0x20, 0, 0x28, 2, ...leb(0)]),            // local.get 0; i32.load align=4
		body([0x20, 0, 0x28, 2, ...leb(0xfffffff0)]),   // ... offset=0xfffffff0
		body([0x20, 0, 0x29, 3, ...leb(0)]),            // local.get 0; i64.load align=8
	])),
]);

function run(tag, iterations) {
	const inst = new WebAssembly.Instance(new WebAssembly.Module(wasm));
	const { load, loadFar, load64, mem } = inst.exports;
	const words = new Uint32Array(mem.buffer);
	for (let i = 0; i < words.length; i++)
		words[i] = (i * 2654435761) >>> 0;
	const lines = [];
	let sum = 0, traps = 0;
	const messages = new Map();
	const trap = (f, addr) => {
		try {
			f(addr);
			return false;
		} catch (e) {
			if (!(e instanceof WebAssembly.RuntimeError))
				throw e;
			messages.set(e.message, (messages.get(e.message) || 0) + 1);
			return true;
		}
	};
	for (let i = 0; i < iterations; i++) {
		sum = (sum + load((i % 16384) * 4)) | 0;          // in bounds
		sum = (sum + Number(load64(65528) & 0xffffn)) | 0; // the last 8 bytes
		traps += trap(load, 65536 + (i % 4096) * 4);       // past the end
		traps += trap(load, 0xfffffffc);                   // 4 GiB - 4
		traps += trap(loadFar, i % 32);                    // offset past 4 GiB
		traps += trap(load64, 65532);                      // straddles the end
	}
	lines.push(`${tag}: ${iterations} iterations, in-bounds sum ${sum}, ${traps} traps caught`);
	for (const [m, n] of [...messages].sort())
		lines.push(`${tag}:   RuntimeError "${m}" x ${n}`);
	return lines;
}

if (isMainThread) {
	const iterations = Number(process.argv[2]);
	const nworkers = Number(process.argv[3]);
	if (process.env.RT_MAPS)
		fs.writeFileSync(process.env.RT_MAPS, fs.readFileSync('/proc/self/maps'));
	// The names of this process's threads (run.sh looks for faultline's healer).
	if (process.env.RT_TASKS)
		fs.writeFileSync(process.env.RT_TASKS, fs.readdirSync('/proc/self/task').map((t) => {
			try {
				return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8');
			} catch (e) {
				return '';
			}
		}).join(''));
	const results = [];
	let pending = nworkers;
	for (let w = 0; w < nworkers; w++) {
		const worker = new Worker(__filename, { workerData: { tag: `worker ${w}`, iterations } });
		worker.on('message', (lines) => {
			results[w] = lines;
		});
		worker.on('exit', (code) => {
			if (code !== 0)
				results[w] = [`worker ${w}: exit code ${code}`];
			if (--pending === 0) {
				for (const l of results.flat())
					console.log(l);
				console.log('done');
			}
		});
	}
	for (const l of run('main', iterations))
		console.log(l);
} else {
	parentPort.postMessage(run(workerData.tag, workerData.iterations));
}
