/** The seed of randomized tests: `PSYNC_SEED` replays one; printed in the test names. */
export const seed = Number(process.env.PSYNC_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`# randomized tests: PSYNC_SEED=${seed}`);

/**
 * A small deterministic generator (mulberry32).
 * @param {number} value
 * @returns {() => number} in [0, 1)
 */
export function seededRandom(value) {
    let state = value >>> 0;
    return () => {
        state = (state + 0x6d2b79f5) >>> 0;
        let t = state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
