import { conformance } from '@floodgate/testing';
import { nextFactory } from './suite-factory';

conformance(nextFactory);
