// tessel's page: the wasm module (tessel-web) is embedded as base64 in tessel-wasm.js
// (TESSEL_WASM), because browsers refuse to fetch a .wasm file from file://.
"use strict";

let wasm = null;

// Writes `text` into the module's input buffer and calls `fn` (tessel_eval or tessel_svg);
// returns the answer as a string.
function call(fn, text) {
  const input = new TextEncoder().encode(text);
  const p = wasm.tessel_input(input.length);
  new Uint8Array(wasm.memory.buffer, p, input.length).set(input);
  const n = wasm[fn](input.length);
  const q = wasm.tessel_output();
  return new TextDecoder().decode(new Uint8Array(wasm.memory.buffer, q, n));
}

function show(expr) {
  const result = document.getElementById("result");
  const picture = document.getElementById("picture");
  if (expr.trim() === "") {
    result.textContent = "";
    result.className = "";
    picture.innerHTML = "";
    return;
  }
  let value, svg;
  try {
    value = call("tessel_eval", expr);
    svg = value.startsWith("error: ") ? "" : call("tessel_svg", expr);
  } catch (e) {
    // a trap in the module (a bug in tessel): say so, and start a fresh instance
    value = "error: internal error (a bug in tessel, please report): " + e;
    svg = "";
    load();
  }
  result.textContent = value;
  result.className = value.startsWith("error: ") ? "error" : "";
  picture.innerHTML = svg.startsWith("<svg") ? svg : "";
}

async function load() {
  const bytes = Uint8Array.from(atob(TESSEL_WASM), (c) => c.charCodeAt(0));
  const { instance } = await WebAssembly.instantiate(bytes, {});
  wasm = instance.exports;
}

function fromHash() {
  const h = decodeURIComponent(location.hash.slice(1));
  if (h) {
    document.getElementById("expr").value = h;
    show(h);
  }
}

load().then(() => {
  const box = document.getElementById("expr");
  box.addEventListener("input", () => show(box.value));
  box.addEventListener("keydown", (e) => { if (e.key === "Enter") show(box.value); });
  window.addEventListener("hashchange", fromHash);
  fromHash();
  window.tesselReady = true;
});
