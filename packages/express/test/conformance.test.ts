import { conformance } from '@floodgate/testing';
import { expressFactory } from './app-factory';

conformance(expressFactory);
