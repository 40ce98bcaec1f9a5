import { conformance } from '@floodgate/testing';
import { trpcFactory } from './app-factory';

conformance(trpcFactory);
