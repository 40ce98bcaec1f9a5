/** ioredis stays a Node module the server requires, not bundled. */
export default { serverExternalPackages: ['ioredis'] };
