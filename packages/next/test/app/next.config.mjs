/**
 * The test app: ioredis stays a Node module the server requires, not bundled. Its types are not checked
 * by `next build` (the copy in a temporary folder sees node_modules through a link TypeScript does not follow).
 */
export default { serverExternalPackages: ['ioredis'], typescript: { ignoreBuildErrors: true } };
