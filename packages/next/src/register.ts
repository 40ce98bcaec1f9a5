/**
 * `@floodgate/next/register`: the peer stamp (peer.ts) from the moment Node starts, before Next has
 * loaded anything: `NODE_OPTIONS='--require @floodgate/next/register' next start`. Without it the stamp
 * starts when the app's code first loads, and the requests that arrive before that have no known address.
 *
 * @module @floodgate/next/register
 */
import { stampPeers } from './peer';

stampPeers();
