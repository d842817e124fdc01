// Prints the known answers of tests/unit/test_mlkem.c from an independent
// ML-KEM-768, @noble/post-quantum 0.2.1 (npm), under Debian's nodejs:
//   npm install @noble/post-quantum@0.2.1 && node mlkem_vectors.mjs
// Each line: d z m sha3-256(ek) sha3-256(dk) sha3-256(ct) ss flipped-byte
// ss-of-the-altered-ct. d, z and m are fixed, from SHA-512 of short tags.
import { ml_kem768 } from '@noble/post-quantum/ml-kem';
import { createHash } from 'node:crypto';
const hex = (b) => Buffer.from(b).toString('hex');
const sha3 = (b) => createHash('sha3-256').update(b).digest('hex');
const seedOf = (tag, n) => createHash('sha512').update(tag).digest().subarray(0, n);
for (let i = 0; i < 4; i++) {
  const d = seedOf('d' + i, 32), z = seedOf('z' + i, 32), m = seedOf('m' + i, 32);
  const { publicKey, secretKey } = ml_kem768.keygen(Buffer.concat([d, z]));
  const { cipherText, sharedSecret } = ml_kem768.encapsulate(publicKey, m);
  const bad = Uint8Array.from(cipherText); bad[i * 100] ^= 1;
  const rej = ml_kem768.decapsulate(bad, secretKey);
  console.log([hex(d), hex(z), hex(m), sha3(publicKey), sha3(secretKey), sha3(cipherText), hex(sharedSecret), String(i * 100), hex(rej)].join(' '));
}
