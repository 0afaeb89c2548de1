/** An object every read of which throws: a getter, a key listing, a prototype lookup. */
export const trap = (): object =>
  new Proxy({}, {
    get: () => {
      throw new Error("get trap");
    },
    ownKeys: () => {
      throw new Error("ownKeys trap");
    },
    getPrototypeOf: () => {
      throw new Error("getPrototypeOf trap");
    },
  });
