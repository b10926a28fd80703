// node packaging/npm/debug-sections.js FILE
//
// Prints the names of FILE's ELF sections that a stripped release binary has no use for,
// one a line: debug info (`.debug_*`, `.zdebug_*`) and the symbol table (`.symtab`,
// `.strtab`): those never loaded to run. (`.debug_gdb_scripts`, the name of gdb's
// pretty-printer script, is loaded, a few bytes, and `strip` keeps it.) Prints nothing for a
// stripped binary, or for a file that is not ELF (a macOS binary: its debug info stays in
// the build folder, and `strip = true` of the dist profile takes its symbols).
// packaging/npm/build.sh refuses a binary for which it prints anything.
"use strict";

const fs = require("node:fs");

const file = process.argv[2];
if (!file) {
  process.stderr.write("usage: node debug-sections.js FILE\n");
  process.exit(2);
}
const b = fs.readFileSync(file);
if (b.length < 64 || b.readUInt32BE(0) !== 0x7f454c46) process.exit(0);

const is64 = b[4] === 2;
const le = b[5] === 1;
const u16 = (o) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
const u32 = (o) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
const word = (o) => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(o));

// The ELF header: where the section headers are, how many, which one holds their names.
const shoff = word(is64 ? 0x28 : 0x20);
const shentsize = u16(is64 ? 0x3a : 0x2e);
let shnum = u16(is64 ? 0x3c : 0x30);
let shstrndx = u16(is64 ? 0x3e : 0x32);
if (shoff === 0) process.exit(0);
// A section header: its name (an offset into the names' section), its offset and size.
const header = (i) => {
  const h = shoff + i * shentsize;
  return {
    name: u32(h),
    flags: u32(h + 8), // the low 32 bits: SHF_ALLOC is 0x2
    link: u32(h + (is64 ? 0x28 : 0x18)),
    offset: word(h + (is64 ? 0x18 : 0x10)),
    size: word(h + (is64 ? 0x20 : 0x14)),
  };
};
// More sections than 16 bits count (or name): the numbers are in section 0.
if (shnum === 0) shnum = header(0).size;
if (shstrndx === 0xffff) shstrndx = header(0).link;

const names = header(shstrndx);
const nameAt = (o) => {
  const start = names.offset + o;
  const end = b.indexOf(0, start);
  return b.toString("latin1", start, end < 0 ? b.length : end);
};
for (let i = 1; i < shnum; i++) {
  const h = header(i);
  const name = nameAt(h.name);
  const loaded = (h.flags & 0x2) !== 0;
  if (!loaded && (/^\.z?debug/.test(name) || name === ".symtab" || name === ".strtab")) {
    process.stdout.write(`${name}\n`);
  }
}
