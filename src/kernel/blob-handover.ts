/**
 * Internal to isochain (not re-exported by the kernel's index, so not public API): lets
 * isochain's own code give a byte array away to the built-in blob stores. Their `put` copies the
 * bytes it is given, so a caller that changes its array afterwards cannot change what is stored
 * or make it disagree with its ref; when the caller is isochain itself and the array was made
 * for the store (the invoker's UTF-8 encoding of an offloaded result), that copy is waste: a
 * fresh megabyte costs 0.3-0.6 ms here, mostly page faults. A store that does not know the mark
 * copies as its contract says. The mark travels with the array, not with a store: a custom store
 * that passes the bytes on to a built-in one and also keeps them (a cache whose `resolve` hands
 * that same array out) would share memory with it; such a store already breaks `put`'s copy.
 * @module
 */

const handedOver = new WeakSet<Uint8Array>();

/**
 * Marks `bytes` as given away: the caller promises never to read or write them again once they
 * are passed to a built-in store's `put`. Returns `bytes`.
 */
export function handOverBytes(bytes: Uint8Array): Uint8Array {
  handedOver.add(bytes);
  return bytes;
}

/**
 * True, once, for bytes marked by {@link handOverBytes} that own their whole buffer (a view into
 * a larger buffer would keep all of it alive, so it is copied anyway). The mark is consumed.
 */
export function takeHandedOver(bytes: Uint8Array): boolean {
  if (!handedOver.delete(bytes)) return false;
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !(bytes.buffer instanceof SharedArrayBuffer);
}
