// Solves the signup form's proof of work in the background while the
// person types, so that sending the form costs them nothing: it finds a
// number n such that SHA-256(MAC + ":" + n), MAC being the last part of
// the form's challenge, starts with data-proof-bits zero bits, and puts
// it in the form's "proof" field. A form sent before that waits for it
// (except by a button marked data-proof="none").
// The form works without this script: the server then asks only that a
// few seconds pass between showing the form and sending it.
(function () {
  "use strict";
  var K = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
  ];
  var W = new Int32Array(64);

  // firstWord is the first 32 bits of SHA-256(s), for an ASCII s shorter
  // than 56 bytes (one block).
  function firstWord(s) {
    var i, n = s.length;
    for (i = 0; i < 16; i++) { W[i] = 0; }
    for (i = 0; i < n; i++) { W[i >> 2] |= s.charCodeAt(i) << (24 - 8 * (i & 3)); }
    W[n >> 2] |= 0x80 << (24 - 8 * (n & 3));
    W[15] = n * 8;
    for (i = 16; i < 64; i++) {
      var x = W[i - 15], y = W[i - 2];
      var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    var a = 0x6a09e667, b = 0xbb67ae85 | 0, c = 0x3c6ef372, d = 0xa54ff53a | 0,
        e = 0x510e527f, f = 0x9b05688c | 0, g = 0x1f83d9ab, h = 0x5be0cd19;
    for (i = 0; i < 64; i++) {
      var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      var t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      var t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    return (0x6a09e667 + a) | 0;
  }

  function solve(form) {
    var ch = form.querySelector("input[name=proof_challenge]");
    var out = form.querySelector("input[name=proof]");
    var bits = parseInt(form.getAttribute("data-proof-bits"), 10);
    if (!ch || !out || !(bits > 0 && bits <= 32)) { return; }
    var mac = ch.value.slice(ch.value.lastIndexOf(".") + 1) + ":";
    var shift = 32 - bits, n = 0, done = false, waiting = null;
    // A button marked data-proof="none" (the preview) asks for no proof:
    // its form goes at once. Any other waits for the answer and is then
    // sent as pressed, with that button's name and value.
    form.addEventListener("submit", function (ev) {
      var by = ev.submitter;
      if (done || (by && by.getAttribute("data-proof") === "none")) { return; }
      ev.preventDefault();
      waiting = by || form;
      form.setAttribute("aria-busy", "true");
    });
    function send() {
      if (waiting !== form && form.requestSubmit) { form.requestSubmit(waiting); } else { form.submit(); }
    }
    function step() {
      for (var end = n + 20000; n < end; n++) {
        if ((firstWord(mac + n) >>> shift) === 0) {
          out.value = String(n);
          done = true;
          if (waiting) { send(); }
          return;
        }
      }
      setTimeout(step, 0);
    }
    setTimeout(step, 0);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var forms = document.querySelectorAll("form[data-proof-bits]");
    for (var i = 0; i < forms.length; i++) { solve(forms[i]); }
  });
})();
