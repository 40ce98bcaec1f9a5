import { conformance } from '@floodgate/testing';
import { koaFactory } from './app-factory';

conformance(koaFactory);
