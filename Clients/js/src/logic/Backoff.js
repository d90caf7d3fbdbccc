/**
 * The wait before reconnection attempt number `failures` (1 for the first): `base` doubled per
 * failure up to `maximum`, then scaled by a jitter factor in [0.5, 1) so that clients dropped
 * together do not come back together. `random` returns a number in [0, 1) (injected in tests).
 *
 * @param {number} failures at least 1
 * @param {{base: number, maximum: number}} delays milliseconds
 * @param {() => number} random
 * @returns {number} milliseconds
 */
export function reconnectDelay(failures, delays, random) {
    const exponent = Math.min(Math.max(failures, 1) - 1, 16);
    const capped = Math.min(delays.base * 2 ** exponent, delays.maximum);
    return Math.round(capped * (0.5 + random() / 2));
}
